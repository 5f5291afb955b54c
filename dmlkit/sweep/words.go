package sweep

// The shared vocabulary: the words of the configuration keys and values that every paper's runs
// have in common — the dataset, the batch, the budget, the start, the optimiser, the schedule,
// the backbone. [LabelMap.Key] and [LabelMap.Value] fall back to it where the spec's labels map
// does not name a key or a value (the spec's own words come first: CIT names data.name
// "Benchmark", IDML names omniglot "Omni-100"), so that a generated sentence that names a
// configuration ("dataset: tuned at Omniglot, this arm Fashion-MNIST") reads in words in every
// paper without each spec repeating them.
//
// Keys are written as a reader says them, lower case (they stand inside sentences); values that are
// proper names (datasets, optimisers, networks) as their authors write them. A value is looked up
// as "key=value", then alone, as in the spec's map.
var commonWords = map[string]string{
	// Keys.
	"data.name":                "dataset",
	"data.train_classes":       "training classes",
	"data.val_classes":         "held-out training classes",
	"data.class_fraction":      "training classes kept",
	"data.corrupt.label_noise": "label noise",
	"data.corrupt.image_noise": "image noise",
	"data.corrupt.image_pool":  "noise images",
	"sampler.name":             "sampler",
	"sampler.batch_size":       "batch size",
	"sampler.m":                "images per class",
	"epochs":                   "epochs",
	"steps":                    "steps",
	"optimizer.name":           "optimiser",
	"optimizer.lr":             "learning rate",
	"optimizer.weight_decay":   "weight decay",
	"schedule.name":            "schedule",
	"model.backbone":           "backbone",
	"model.dim":                "embedding size",
	"model.channels":           "block widths",
	"model.pretrained":         "pretrained weights",
	"model.freeze_backbone":    "frozen backbone",
	"model.trainable_tail":     "fine-tuned blocks",
	"model.init_from":          "initialised from",
	"model.init_head":          "head initialised too",
	"loss.name":                "loss",
	"loss.set.expr":            "loss",
	// Datasets.
	"omniglot":       "Omniglot",
	"mnist":          "MNIST",
	"fashion-mnist":  "Fashion-MNIST",
	"cifar10":        "CIFAR-10",
	"cub":            "CUB-200-2011",
	"data.name=cars": "Cars196",
	"sop":            "Stanford Online Products",
	"inshop":         "In-Shop",
	"inat":           "iNaturalist",
	"market1501":     "Market-1501",
	// Optimisers, schedules, samplers.
	"adam":                     "Adam",
	"adamw":                    "AdamW",
	"sgd":                      "SGD",
	"schedule.name=cosine":     "cosine",
	"schedule.name=step":       "step",
	"schedule.name=constant":   "constant",
	"sampler.name=m_per_class": "m images per class",
	// Backbones.
	"cnn":                     "CNN",
	"mobilenet_v2":            "MobileNetV2",
	"mobilenet_v1":            "MobileNetV1",
	"resnet18":                "ResNet-18",
	"resnet50":                "ResNet-50",
	"vit_b16":                 "ViT-B/16",
	"vit_s16":                 "ViT-S/16",
	"vit_tiny":                "ViT-Tiny",
	"model.backbone=features": "cached features",
}

// CommonWord is the shared vocabulary's text of a key, a value or a "key=value" (see commonWords).
func CommonWord(name string) (string, bool) {
	t, ok := commonWords[name]
	return t, ok
}
