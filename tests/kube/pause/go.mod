module gospan.test/kube/pause

go 1.24
