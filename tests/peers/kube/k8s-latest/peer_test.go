// SPDX-License-Identifier: Apache-2.0

// vmact-cloudprovider read as the newest cluster-autoscaler reads it, with
// the newest Kubernetes types (k8s.io/api as go.mod pins it): nodeBytes
// (2), the protobuf durations (8-10), maxNodeStartupDuration (11) and
// allowNonAtomicScaleUpToMax (12).
package peer

import (
	"testing"

	"vmact.dev/tests/kubepeer"
)

func TestAutoscalerLatest(t *testing.T) { kubepeer.Run(t, kubepeer.Current) }
