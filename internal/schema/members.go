package schema

// Members is a JSON object as the list of its members, in the order of the
// document, with unique keys. DecodeMembers produces it for a top-level
// object that the caller reads once and does not keep: looking a key up
// among a few members costs less than building a map and hashing every
// key. ValidateMembers and BindMembers treat it exactly as they would the
// same object as a map[string]any.
type Members []Member

// Member is one member of an object.
type Member struct {
	Key   string
	Value any
}

// Get returns the value of the member named key and whether there is one.
func (ms Members) Get(key string) (any, bool) {
	for i := range ms {
		if ms[i].Key == key {
			return ms[i].Value, true
		}
	}
	return nil, false
}

// DecodeMembers is Decode for text held in a string whose top-level value
// should be an object. When it is one, its members are returned (in the
// memory of buf, which a caller done with the members may pass again) and
// the value is nil; the result is non-nil exactly in that case, even for
// an empty object. Any other value is returned as Decode returns it, with
// nil members. Nested objects are maps, as always. The strings of the
// result share the memory of s.
func DecodeMembers(s string, buf Members) (Members, any, error) {
	return decode(s, true, buf[:0])
}

// object is a JSON object in either form this package reads: a map (m) or
// Members (ms, when m is nil). It is passed by value and never boxed, so
// reading either form allocates nothing.
type object struct {
	m  map[string]any
	ms Members
}

func (o object) get(key string) (any, bool) {
	if o.m != nil {
		v, ok := o.m[key]
		return v, ok
	}
	return o.ms.Get(key)
}

func (o object) size() int {
	if o.m != nil {
		return len(o.m)
	}
	return len(o.ms)
}

// each calls f with every member, in no particular order, until f returns
// false.
func (o object) each(f func(key string, v any) bool) {
	if o.m != nil {
		for k, v := range o.m {
			if !f(k, v) {
				return
			}
		}
		return
	}
	for i := range o.ms {
		if !f(o.ms[i].Key, o.ms[i].Value) {
			return
		}
	}
}
