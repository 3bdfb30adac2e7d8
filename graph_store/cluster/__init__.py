"""Writes on a Ray cluster: the optional extra ``hopgraph[cluster]``, above the index's life.

``connect`` joins a cluster (or starts one on this machine for the write, Ray's token
authentication on), ``partitions`` cuts a corpus by document and writes one partition's files,
and ``build`` runs a partitioned build: tasks write the partitions, the driver reduces what
needs the whole corpus and commits the manifest. Nothing below this room imports Ray.
"""
