"""The lab in the browser (``ragmeter lab``) and the same views as one self-contained HTML
report (``ragmeter report``). See docs/lab.md."""

__all__: list[str] = []
