// Package manager assembles what every component's process needs once: the REST client, the
// informer factory fed by the component's bus queue (relisted on every connect), the event
// recorder, leader election, and the metrics and profile servers. A component declares its
// parts (Add, AddLeading) and Start runs them in order: caches first, leader-gated work once
// this process leads and its caches have synced, servers stopped first on the way out.
package manager
