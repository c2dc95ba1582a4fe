import DemoArith.Defs
import DemoArith.Lemmas
import DemoArith.Expr
