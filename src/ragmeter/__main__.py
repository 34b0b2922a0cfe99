from .cli import main
from .cli._common import exit_process

try:
    main()
except SystemExit as exc:  # every exit: see exit_process (a native thread must not abort it)
    exit_process(exc.code)
