# `tessel db ...` subcommands as a library, so that tools/main.cpp and the tests share one
# implementation. Included from tools/CMakeLists.txt (and by tests that need it before that exists).
if(NOT TARGET tessel_db_cli)
  add_library(tessel_db_cli STATIC ${PROJECT_SOURCE_DIR}/tools/db_command.cpp)
  target_include_directories(tessel_db_cli PUBLIC ${PROJECT_SOURCE_DIR})
  # tessel_schedule: the record validator parses workloads and replays traces.
  target_link_libraries(tessel_db_cli PUBLIC tessel_database PRIVATE tessel_schedule nlohmann_json::nlohmann_json)
endif()
