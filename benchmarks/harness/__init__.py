"""What the live tests (``tests/kube/``) and the benchmarks both start and watch: real API servers
(:mod:`.envtest`), our daemon as a process and a cluster's objects (:mod:`.daemon`, with :mod:`.pki` for the
clients of its secure port), the fault-injecting proxy (:mod:`.faultproxy`) and the leader-election lock two
replicas contend for (:mod:`.leaderlock`). Nothing here is a test."""
