import Lake
open Lake DSL

package demo_arith

@[default_target]
lean_lib DemoArith
