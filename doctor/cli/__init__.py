"""The `llmdoctor` command line: click commands only, each in its own module, loaded on demand.

Importing this package means a CLI run is starting. Such a run lives for a fraction of a second and creates
few reference cycles, but its imports and cached data allocate ~10^5 container objects: at CPython's default
gen-0 threshold (700) a `check` ran ~50 collections, ~15 ms of its wall time (counted with gc.callbacks). A
larger gen-0 threshold keeps collection for the long runs (`report`, `check --targets`) while a short run
never reaches it. It is set here, before `doctor.cli.main` imports click, the first burst of allocations.
"""

import gc

gc.set_threshold(50_000, 20, 20)
