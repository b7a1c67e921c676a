package fetch

import (
	"context"
	"errors"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// now is replaced by tests.
var now = time.Now

// Cleanup deletes debug pods left behind (a SIGKILLed client, a failed deletion), selected by
// ManagedSelector, in namespace or in all namespaces when it is "". Pods younger than minAge
// are kept, so a cleanup does not break another user's run in progress; pass 0 to delete all.
// It returns the pods deleted as "namespace/name", and the errors joined.
func Cleanup(ctx context.Context, client kubernetes.Interface, namespace string, minAge time.Duration) ([]string, error) {
	list, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: ManagedSelector})
	if err != nil {
		return nil, ExplainError(err, namespace)
	}
	var deleted []string
	var errs []error
	for _, p := range list.Items {
		if ctx.Err() != nil {
			errs = append(errs, ctx.Err())
			break
		}
		if minAge > 0 && now().Sub(p.CreationTimestamp.Time) < minAge {
			continue
		}
		if err := deletePod(ctx, client.CoreV1().Pods(p.Namespace), p.Name); err != nil {
			errs = append(errs, ExplainError(err, p.Namespace))
			continue
		}
		deleted = append(deleted, p.Namespace+"/"+p.Name)
	}
	return deleted, errors.Join(errs...)
}
