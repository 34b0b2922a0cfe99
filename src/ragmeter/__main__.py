from .cli import entry

entry()  # every exit goes through exit_process (a native thread must not abort it)
