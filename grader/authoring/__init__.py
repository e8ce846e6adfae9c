"""Authoring: from ``course/*.ipynb`` to an nbgrader course directory. In: the source notebooks.
Out: ``source/``, ``release/`` and ``nbgrader_config.py`` under the course directory (whose paths
:mod:`.coursedir` names), and the rules a graded test cell must follow (:mod:`.graded_cells`).
"""
