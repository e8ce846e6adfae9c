"""Running: many notebooks graded as jobs. In: a course directory with collected submissions (or
source notebooks, for the quality gate). Jobs go to local worker processes or a Dask cluster, the
trusted references first; each result is saved as it arrives (:func:`.batch.autograde`), or the
course is checked (:func:`.gate.check_notebooks`). Out: outcomes in the gradebook, or gate findings.
"""
