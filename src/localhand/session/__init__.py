"""The one door into a run (``door.Session``), and the library's ways in through it
(``api.run_task``, ``api.run_plan``, ``api.run_any``). See ``door``'s docstring."""
