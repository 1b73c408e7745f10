import copy, yaml, time
from hf_kube import REPO
from hf_gateway import upstream
from test_status_fencing import install, write_lease, put_status, stored

def test_debug(kube):
    install(kube)
    docs = list(yaml.safe_load_all(open(REPO / "deploy/status-fencing.yaml")))
    import os
    v = os.environ.get("VARIANT")
    val = docs[0]["spec"]["validations"]
    if v == "noexpr": val[1]["expression"] = "true"
    if v == "nomsg": val[1]["messageExpression"] = "'x'"
    if v == "none": del val[1]
    r = kube.admin.apply(docs)
    print("APPLIED", r[0].get("status"))
    kube.admin.apply(upstream("api", 8080))
    for i in range(5):
        time.sleep(1)
        r = put_status(kube.admin, stored(kube, "Upstream", "api"), {"state": "Accepted" if i%2 else "Warning", "writer": {"replica": "x", "term": 5}})
        print("PUT", r.status, r.text()[:400])
    assert False
