"""The user's jobs, each written once: score runs, compare / gate / sweep two variants,
diagnose, run and record an experiment, check answers, report, the golden-set jobs (import,
validate, freeze, relocate, agree, traffic), chunking and the chunk-qrels export.

Each public module here holds one job as typed functions that take a resolved run reference
(``workflows.refs``) and return the existing records. The command line (``cli/``) and the lab
(``lab/``) only parse input, call one workflow and render what it returns; they import the
modules of this package (``from ragmeter.workflows import compare``) inside their command
functions, so ``ragmeter --help`` imports none of the machinery below.
"""
