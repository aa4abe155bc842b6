package rbac

import (
	rbacv1 "k8s.io/api/rbac/v1"

	"minik8s.io/shared/apierror"
)

// Static is policy held in memory, indexed for the listers: for tests, benchmarks and
// anything that has its roles and bindings at hand. Its not-found errors read as an
// informer lister's do (role.rbac.authorization.k8s.io "x" not found).
type Static struct {
	*BindingIndex
	roles        map[[2]string]*rbacv1.Role
	clusterRoles map[string]*rbacv1.ClusterRole
}

var (
	_ RoleGetter        = (*Static)(nil)
	_ ClusterRoleGetter = (*Static)(nil)
	_ BindingLister     = (*Static)(nil)
)

// NewStatic indexes the given policy.
func NewStatic(roles []*rbacv1.Role, roleBindings []*rbacv1.RoleBinding, clusterRoles []*rbacv1.ClusterRole, clusterRoleBindings []*rbacv1.ClusterRoleBinding) *Static {
	s := &Static{
		BindingIndex: NewBindingIndex(clusterRoleBindings, roleBindings),
		roles:        make(map[[2]string]*rbacv1.Role, len(roles)),
		clusterRoles: make(map[string]*rbacv1.ClusterRole, len(clusterRoles)),
	}
	for _, r := range roles {
		s.roles[[2]string{r.Namespace, r.Name}] = r
	}
	for _, r := range clusterRoles {
		s.clusterRoles[r.Name] = r
	}
	return s
}

// NewAuthorizer is the RBAC authorizer over s.
func (s *Static) NewAuthorizer() *Authorizer { return New(s, s, s) }

// GetRole implements RoleGetter.
func (s *Static) GetRole(namespace, name string) (*rbacv1.Role, error) {
	if r, ok := s.roles[[2]string{namespace, name}]; ok {
		return r, nil
	}
	return nil, apierror.NotFound(rbacv1.GroupName, "role", name)
}

// GetClusterRole implements ClusterRoleGetter.
func (s *Static) GetClusterRole(name string) (*rbacv1.ClusterRole, error) {
	if r, ok := s.clusterRoles[name]; ok {
		return r, nil
	}
	return nil, apierror.NotFound(rbacv1.GroupName, "clusterrole", name)
}
