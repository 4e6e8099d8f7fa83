"""The `llmdoctor` command line: click commands only, each in its own module, loaded on demand."""
