"""The pipeline of each command, from option objects to a result renderers draw: ``check`` (check.py, and
``check --targets``: fleet.py), ``lint`` (lint.py), ``inspect`` (inspect.py). ``plan``, ``report`` and ``serve``
have their own packages. doctor/cli parses options into these; nothing below the commands imports them.
"""
