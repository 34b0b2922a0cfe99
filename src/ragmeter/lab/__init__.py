"""The lab in the browser (``ragmeter lab``) and the same views as one self-contained HTML
report (``ragmeter report``). See docs/lab.md."""

from ._app import create_app
from ._listen import listen, serve, where
from ._paths import lab_root
from ._report import write_report

__all__ = ["create_app", "lab_root", "listen", "serve", "where", "write_report"]
