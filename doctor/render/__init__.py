"""Every renderer: a command's result as text for people, Markdown, HTML, and the JSON documents' shapes where
they are drawn. check.py, lint.py, plan.py, inspect.py, fleet.py (``check --targets``), report_text.py and
report_html.py (with svg.py's charts), alert.py (``serve``'s message); findings.py and text.py are shared."""
