// SPDX-License-Identifier: Apache-2.0

// vmact-cloudprovider read as cluster-autoscaler 1.30 reads it, with the
// Kubernetes types of its era (k8s.io/api v0.30): the template node from
// the embedded nodeInfo (1), the options' apimachinery durations (3-5).
package peer

import (
	"testing"

	"vmact.dev/tests/kubepeer"
)

func TestAutoscaler130(t *testing.T) { kubepeer.Run(t, kubepeer.Deprecated) }
