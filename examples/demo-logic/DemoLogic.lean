import DemoLogic.Basic
import DemoLogic.Answer
import DemoLogic.Quantifiers
import DemoLogic.Derived
