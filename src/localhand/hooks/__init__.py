"""The user's hooks: their own commands at each tool call and at the end of a run.

``[hooks]`` in the user's ``config.toml`` (never a workspace file: ``localhand.config.settings``)
names them (``config``); ``command`` runs one in the run's sandbox with the event as JSON on
its stdin; ``hookset.Hooks`` decides which run for a call and what the model reads of them;
``tools.HookedTools`` puts them around the run's tools. Each run of a hook is a ``hook_ran``
event.
"""
