"""The run tree and its artefacts, torch-free: the prior and the architecture
(:mod:`.config`), the root of the run tree (:mod:`.tree`), atomic artefacts and the
runs-root lock (:mod:`.runs`), and the convergence criterion of every trained verdict
(:mod:`.convergence`, its status :mod:`.status`)."""
