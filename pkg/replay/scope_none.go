package replay

import v1 "k8s.io/api/core/v1"

const noneTopologyScope = "none"

// noneScope is topologymanager.noneScope, the scope of policy none: no hints, no merge.
type noneScope struct{ scope }

func newNoneScope() *noneScope {
	return &noneScope{newScope(noneTopologyScope, topologyNonePolicy{})}
}

func (s *noneScope) Admit(pod *v1.Pod, _ bool) AdmitResult { return s.admitPolicyNone(pod) }
