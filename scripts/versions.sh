# Pinned versions of tools fetched outside Debian and npm (npm: package-lock.json).
PGV_VERSION=v1.2.1
