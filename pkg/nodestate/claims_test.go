package nodestate

import (
	"context"
	"reflect"
	"strings"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/decode"
	"github.com/kubectl-nodestate/kubectl-nodestate/pkg/doctor"
)

func claimsClient(objs ...runtime.Object) *fake.Clientset {
	client := fake.NewSimpleClientset(objs...)
	client.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{
		{GroupVersion: "resource.k8s.io/v1", APIResources: []metav1.APIResource{{Name: "resourceclaims", Namespaced: true, Kind: "ResourceClaim"}}},
	}
	return client
}

func TestReadClaims(t *testing.T) {
	allocated := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "gpu", UID: "u1"},
		Status: resourcev1.ResourceClaimStatus{Allocation: &resourcev1.AllocationResult{},
			ReservedFor: []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "p", UID: "pod-1"}}}}
	client := claimsClient(allocated)
	get, why := claimsAPI(client)
	if get == nil {
		t.Fatal(why)
	}
	prepared := []decode.DRAClaim{{Namespace: "ml", ClaimName: "gpu"}, {Namespace: "ml", ClaimName: "gone"}}
	got, skipped := readClaims(context.Background(), get, prepared)
	want := map[string]doctor.ClaimStatus{"ml/gpu": {UID: "u1", Allocated: true, ReservedFor: []string{"pod-1"}}}
	if skipped != "" || !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v %q, want %+v", got, skipped, want)
	}

	// RBAC without resourceclaims: skipped and named, never an error of the read.
	client.PrependReactor("get", "resourceclaims", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "resource.k8s.io", Resource: "resourceclaims"}, "gpu", nil)
	})
	got, skipped = readClaims(context.Background(), get, prepared)
	if got != nil || !strings.Contains(skipped, "no get on resourceclaims in namespace ml") {
		t.Errorf("forbidden: %+v %q", got, skipped)
	}

	// A server without the API.
	bare := fake.NewSimpleClientset()
	if get, why := claimsAPI(bare); get != nil || !strings.Contains(why, "serves no resource.k8s.io") {
		t.Errorf("no API: %q", why)
	}
}
