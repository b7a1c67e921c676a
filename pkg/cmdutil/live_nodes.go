package cmdutil

import (
	"context"
	"fmt"
	"io"

	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// eachLiveSnapshot reads live nodes. Not wired yet: the fetch package lands next.
func eachLiveSnapshot(ctx context.Context, src *SourceOptions, live *LiveOptions, nodes []string, errOut io.Writer, fn func(*Snapshot) error) error {
	return fmt.Errorf("reading live nodes is not available in this build yet: copy the kubelet dir and use --from-dir")
}

func completeNodes(ctx context.Context, flags *genericclioptions.ConfigFlags, prefix string) []string {
	return nil
}
