package results

import (
	"reflect"
	"time"
)

// deepCopy is v sharing no memory with it: every pointer, slice, map and
// interface is copied, recursively; a time.Time is copied by value (its
// location is shared, as it is immutable). It is the writer's one copy of
// the schema, so that a new field of Results, at any depth, is copied
// without code of its own (TestCloneSharesNoMemory holds every field to it).
func deepCopy[T any](v T) T {
	var out T
	copyValue(reflect.ValueOf(&out).Elem(), reflect.ValueOf(&v).Elem())
	return out
}

var timeType = reflect.TypeFor[time.Time]()

// copyValue sets dst, a settable zero value, to a deep copy of src.
func copyValue(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		p := reflect.New(src.Type().Elem())
		copyValue(p.Elem(), src.Elem())
		dst.Set(p)
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		s := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
		for i := range src.Len() {
			copyValue(s.Index(i), src.Index(i))
		}
		dst.Set(s)
	case reflect.Map:
		if src.IsNil() {
			return
		}
		m := reflect.MakeMapWithSize(src.Type(), src.Len())
		for it := src.MapRange(); it.Next(); {
			k := reflect.New(src.Type().Key()).Elem()
			copyValue(k, it.Key())
			e := reflect.New(src.Type().Elem()).Elem()
			copyValue(e, it.Value())
			m.SetMapIndex(k, e)
		}
		dst.Set(m)
	case reflect.Interface:
		if src.IsNil() {
			return
		}
		e := reflect.New(src.Elem().Type()).Elem()
		copyValue(e, src.Elem())
		dst.Set(e)
	case reflect.Array:
		for i := range src.Len() {
			copyValue(dst.Index(i), src.Index(i))
		}
	case reflect.Struct:
		// By value first: time.Time's and any unexported field's state;
		// then every exported field again, deeply.
		dst.Set(src)
		if src.Type() == timeType {
			return
		}
		for i := range src.NumField() {
			if f := dst.Field(i); f.CanSet() {
				f.SetZero()
				copyValue(f, src.Field(i))
			}
		}
	default:
		dst.Set(src)
	}
}
