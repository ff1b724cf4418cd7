// RUN: hla-opt %s --hla-lower-asserts --split-input-file --verify-diagnostics

// Tests that hla-lower-asserts refuses a run-time check inside an OpenMP
// region: hla_abort unwinds to the entry call on the calling thread, which
// a worker thread (or the parallel region's own frames) must not do.

func.func @in_parallel(%ok: i1) {
  omp.parallel {
    // expected-error @below {{hla-lower-asserts: a run-time check inside 'omp.parallel' cannot report its failure (checks must run outside OpenMP regions)}}
    cf.assert %ok, "bad input"
    omp.terminator
  }
  return
}

// -----

func.func @in_worksharing_loop(%ok: i1, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i) : index = (%c0) to (%n) step (%c1) {
        // expected-error @below {{a run-time check inside 'omp.loop_nest' cannot report its failure}}
        cf.assert %ok, "bad input"
        omp.yield
      }
    }
    omp.terminator
  }
  return
}
