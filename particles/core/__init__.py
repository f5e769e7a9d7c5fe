"""The base every package of the distribution builds on.

``particles.core`` holds what is not about particles but shared by
``particles``, ``effective_theory`` and ``fitting`` alike:

==================  ==========================================================
``validation``      every argument check (ints, floats, ranges, arrays,
                    choices, paths, output folders) and its message wording
``io``              atomic file writes (a file is old or complete, never half)
``cli``             the ``embdyn`` root parser, its one error boundary, the
                    ``NAME=VALUE`` option parsing and what commands show on
                    stderr (``--quiet``, the progress bar, the compile note);
                    subcommands come from the ``embdyn.commands`` entry points
``lazy``            lazy package attributes (``import fitting`` stays cheap)
``controls``        a value a page may change while something runs: its
                    kind, range, restart flag and the message naming it
``version``         the installed version
``limits``          distribution-wide limits (``MAX_STEPS``)
==================  ==========================================================

It imports nothing else of ours; see docs/architecture.md.
"""
