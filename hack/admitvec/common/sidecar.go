package common

import (
	"reflect"

	v1 "k8s.io/api/core/v1"
)

// hasSidecars: whether the k8s.io/api this binary is built with has restartable init
// containers (Container.RestartPolicy, 1.28). common builds against each release module's own
// k8s.io/api, 1.27's included, so the field is reached by its name.
var hasSidecars = func() bool {
	_, ok := reflect.TypeOf(v1.Container{}).FieldByName("RestartPolicy")
	return ok
}()

// makeSidecar gives c restartPolicy Always (a sidecar); the caller checks hasSidecars.
func makeSidecar(c *v1.Container) {
	if !hasSidecars {
		panic("this release's k8s.io/api has no sidecar containers (Container.RestartPolicy)")
	}
	f := reflect.ValueOf(c).Elem().FieldByName("RestartPolicy")
	always := reflect.New(f.Type().Elem())
	always.Elem().SetString("Always")
	f.Set(always)
}
