#include "trainer/data_options.h"

namespace sampan {
namespace {

DataFileFormat FormatOf(DataFormat f) {
  switch (f) {
    case CRITEO_TSV_UNLABELED:
      return DataFileFormat::kCriteoUnlabeled;
    case AVAZU_CSV:
      return DataFileFormat::kAvazu;
    case LIBSVM:
      return DataFileFormat::kLibsvm;
    case LIBFFM:
      return DataFileFormat::kLibffm;
    case TEXT:
      return DataFileFormat::kText;
    default:
      return DataFileFormat::kCriteo;
  }
}

}  // namespace

ParseOptions ParseOptionsFromJob(const JobConfig& config) {
  const DataConfig& d = config.data();
  ParseOptions parse;
  parse.format = FormatOf(d.format());
  parse.int_buckets = d.integer_features() != DataConfig::LOG_DENSE;
  parse.int_log_dense = d.integer_features() >= DataConfig::LOG_DENSE;
  parse.empty_field_signs = d.empty_field_signs();
  return parse;
}

LoadOptions LoadOptionsFromJob(const JobConfig& config) {
  LoadOptions load;
  load.parse = ParseOptionsFromJob(config);
  load.max_bad_fraction = config.data().max_bad_fraction();
  return load;
}

CriteoReaderOptions ReaderOptionsFromJob(const JobConfig& config) {
  CriteoReaderOptions options;
  options.parse = ParseOptionsFromJob(config);
  return options;
}

}  // namespace sampan
