package hoststat

import "testing"

// /proc/stat is kept open and read again from offset 0: the second reading
// is the kernel's fresh one, not the first one's bytes.
func TestStatFileKeptOpenReadsAfresh(t *testing.T) {
	f := newStatFile()
	first, err := f.readCPUTimes("/proc")
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	if !f.keep || f.fd < 0 {
		t.Fatalf("/proc/stat not kept open: keep=%v fd=%d", f.keep, f.fd)
	}
	fd := f.fd
	var later CPUTimes
	for range 200 {
		if later, err = f.readCPUTimes("/proc"); err != nil {
			t.Fatal(err)
		}
		if later != first {
			break
		}
		for i := 0; i < 1e6; i++ { // let the CPU times move
		}
	}
	if f.fd != fd {
		t.Errorf("reopened: fd %d, then %d", fd, f.fd)
	}
	if later == first {
		t.Errorf("the CPU times never moved over 200 readings: %+v", later)
	}
}

// The daemon reads /proc/stat every few seconds as it goes: a reading
// allocates nothing, or each would be garbage for the collector to wake for.
func TestStatFileReadAllocatesNothing(t *testing.T) {
	f := newStatFile()
	if _, err := f.readCPUTimes("/proc"); err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	var err error
	if n := testing.AllocsPerRun(100, func() { _, err = f.readCPUTimes("/proc") }); n != 0 {
		t.Errorf("a reading allocates %v times, want none", n)
	}
	if err != nil {
		t.Fatal(err)
	}
}
