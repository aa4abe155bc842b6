// Package pods runs the pods bound to this node on a container runtime: one worker per pod
// serialises its syncs, each sync compares the pod's spec with the containers the runtime
// reports (computeActions, a pure function as Kubernetes' computePodActions) and carries out
// the difference: sandbox and network first, init containers in order, app containers with
// image pulls, restart back-off and probes, and on deletion a graceful stop, cleanup and
// finalization. Syncs are triggered by desired-state updates, PLEG events, probe results and a
// periodic resync.
//
// Wiring, as the kubelet binary does it:
//
//	m := pods.New(pods.Config{
//		NodeName: node, HostIP: ip, RootDir: dir,
//		Runtime: docker, Network: cni,
//		Status: writer,       // UpdateStatus(ctx, pod) on the status subresource
//		Finalizer: finalizer, // Finalize(ctx, pod): DELETE with gracePeriodSeconds=0
//		Recorder: recorder,   // shared/record
//	})
//	go m.Start(ctx)           // in the run group
//	for each desired pod: m.Update(pod)   // bus events, relists, the Redis cache at start
//	m.MarkSynced()                        // after the first full relist
//	for each pod gone from the API: m.Remove(uid)
//
// Containers carry labels (package spec) that let a restarted kubelet adopt them: a running
// container whose spec hash matches is kept, one whose hash changed is replaced, and
// containers of pods nobody asked for are removed once MarkSynced was called.
package pods
