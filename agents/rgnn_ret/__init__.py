"""RGNN-Ret (spec gnn_ret §4): sub-questions, recurrent GNN retrieval, self-critique."""
