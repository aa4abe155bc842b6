// Package setup is what the controller-manager hands each controller to build itself with: its
// configuration (from flags) and the shared parts (client, informers, recorder, logger). A
// controller package's Setup turns it into a runnable controller, so adding a controller is a
// package and one line in the controller-manager's table.
package setup
