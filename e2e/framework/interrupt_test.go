package framework

import (
	"reflect"
	"testing"
)

func TestLedgerKeepsWhatWasNotDeleted(t *testing.T) {
	l := &ledger{pending: map[int]string{}}
	net := l.add("delete network n")
	port := l.add("delete port p")
	srv := l.add("delete server s")
	l.done(srv)
	if got, want := l.Pending(), []string{"delete port p", "delete network n"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Pending() = %v, want %v (not yet deleted, last registered first)", got, want)
	}
	l.done(port)
	l.done(net)
	if got := l.Pending(); len(got) != 0 {
		t.Errorf("Pending() = %v after every delete succeeded, want none", got)
	}
}
