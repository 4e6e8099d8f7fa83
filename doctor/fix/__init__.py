"""`lint --fix`: the launch command with the findings' fixes applied, in the shape it was given.

A cause's file may carry ``edits`` (playbooks/causes/<id>.yaml): flag operations templated from the
finding's facts. :mod:`doctor.fix.plan` turns the findings of one lint into concrete edits and classes them
as ruff classes its fixes — *safe* (applied), *needs a value* (applied with a marked placeholder, or left out
when no placeholder can stand there) and *print-only* (explained, not applied: a cause without edits, or
whose fix is a decision the command cannot make). :mod:`doctor.fix.argv` applies edits to the engine's
arguments; :mod:`doctor.fix.text` writes them back into the text as it was given — a shell line or script,
``docker run``, a Kubernetes ``args:`` list or a whole manifest — changing only the engine's arguments.
"""
