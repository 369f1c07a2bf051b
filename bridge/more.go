package bridge

// moreState holds the scratch space of the consume-side and admin handlers.
type moreState struct{}

// registerMore installs the consume-side and admin handlers.
func (g *Gateway) registerMore() {}
