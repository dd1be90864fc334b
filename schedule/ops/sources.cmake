# The operator library and the reference interpreter, relative to schedule/. Included by
# schedule/CMakeLists.txt into the tessel_schedule library.
set(TESSEL_OPS_SOURCES
  ops/op_library.cpp
  ops/matmul_ops.cpp
  ops/conv_ops.cpp
  ops/norm_ops.cpp
  ops/elementwise_op.cpp
  ops/elementwise_parser.cpp
  interpreter/reference_interpreter.cpp
  interpreter/host_memory.cpp
)
