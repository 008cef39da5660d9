"""`kernelevolve model ENTRY`: a model's operators profiled on a target, ranked by what an ideal kernel could save
(the Amdahl table), extracted as problem files and searched (docs/model.md)."""
