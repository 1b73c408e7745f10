# Pinned versions of tools fetched outside Debian and npm (npm: package-lock.json).
PGV_VERSION=v1.2.1
# etcd v3 API protos: Debian's golang-etcd-server-dev, same release as etcd-server.
ETCD_API_DEB_VERSION=3.4.23-4
