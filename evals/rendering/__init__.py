"""The generated tables of the README and the docs, rendered from kept reports, never by hand.

``docs`` lists where each table lives and what renders it (between the markers of
``hopgraph.evals.doc_markers``); the others render one family of tables each.
"""
