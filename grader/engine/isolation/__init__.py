"""Process isolation: the sandboxed kernel a notebook runs in.

In: a merged notebook and its limits. Out: each cell's outputs and records (:mod:`.notebook_run`), read
from a kernel under bubblewrap (:mod:`.sandbox`) and a control group (:mod:`.cgroups`), forked where it can from a
template that imported torch once (:mod:`.warm`, :mod:`.zygote`), its messages
within a budget (:mod:`.messages`, :mod:`.outputs`), its scratch folders removed (:mod:`.cleanup`).
Imports only :mod:`..notebook` of the engine.
"""
