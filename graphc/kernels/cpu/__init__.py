"""The numba CPU target: the backend (`backend`), kernel skeletons around the shared
expression code (`codegen*`), OpenMP regions and free-core choices (`launch`, `cores`,
`adaptive`), BLAS splitting (`blas*`), compiled loops (`loops*`), exact integer and
float-sum helpers (`exact`, `scalar`) and the output pool. Imported on demand: numba is
slow to import."""
