// Package app wires the controller-manager: the shared informers fed from its bus queue, leader
// election, and the controllers, which run only while this process leads.
package app
