"""``llmdoctor mcp``: a Model Context Protocol server over stdio (doctor/serve/mcp.py)."""

from __future__ import annotations

import click

from doctor.errors import EXIT_OK, InputError

EPILOG = """\b
Examples:
  llmdoctor mcp          (started by the assistant's MCP client, which talks to it on stdin/stdout)
  client configuration:  {"mcpServers": {"llmdoctor": {"command": "llmdoctor", "args": ["mcp"]}}}

\b
Tools: inspect, lint, plan, check, playbook_show — each returns the JSON of `llmdoctor COMMAND --format json`.
Needs the MCP SDK: pip install 'llm-serving-doctor[mcp]'.

\b
Exit codes: 0 the client closed the session; 2 the mcp package is not installed.
"""


@click.command("mcp", epilog=EPILOG)
def mcp() -> int:
    """Serve llmdoctor's commands as MCP tools on stdin/stdout (for assistants in incident response)."""
    try:
        from doctor.serve.mcp import main
    except ImportError as exc:
        if (exc.name or "").split(".")[0] not in ("mcp", "pydantic"):
            raise
        raise InputError("llmdoctor mcp needs the MCP SDK: pip install 'llm-serving-doctor[mcp]'") from None
    main()
    return EXIT_OK
