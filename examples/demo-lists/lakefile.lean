import Lake
open Lake DSL

package demo_lists

@[default_target]
lean_lib DemoLists
