import DemoLists.Basic
import DemoLists.Uses
