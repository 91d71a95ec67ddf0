"""Talking to the API server: the client's configuration (kubeconfig), raw JSON requests over keep-alive
connections, informers, whether the server answers, and the one-off reads (``--from-cluster`` snapshots, the
policy ConfigMap, the server's Kubernetes line)."""
