"""`python -m doctor` runs the same CLI as the `llmdoctor` console script."""

from doctor.cli.main import main

main()
