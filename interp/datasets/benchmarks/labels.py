"""The class-label names of the recall paper's classification sets, in label order, as their hub
copies publish them (the ``ClassLabel`` names of ``uoft-cs/cifar100``'s ``fine_label`` and
``ethz/food101``'s ``label``; ``tests/fixtures/benchmarks/schemas.json`` names the sources).
The CIFAR-100 card spells label 26 ``cra``; the reader shows it as ``crab``."""

CIFAR100_NAMES: tuple[str, ...] = tuple(
    """apple aquarium_fish baby bear beaver bed bee beetle bicycle bottle bowl boy bridge bus
    butterfly camel can castle caterpillar cattle chair chimpanzee clock cloud cockroach couch cra
    crocodile cup dinosaur dolphin elephant flatfish forest fox girl hamster house kangaroo keyboard
    lamp lawn_mower leopard lion lizard lobster man maple_tree motorcycle mountain mouse mushroom
    oak_tree orange orchid otter palm_tree pear pickup_truck pine_tree plain plate poppy porcupine
    possum rabbit raccoon ray road rocket rose sea seal shark shrew skunk skyscraper snail snake
    spider squirrel streetcar sunflower sweet_pepper table tank telephone television tiger tractor
    train trout tulip turtle wardrobe whale willow_tree wolf woman worm""".split()
)

FOOD101_NAMES: tuple[str, ...] = tuple(
    """apple_pie baby_back_ribs baklava beef_carpaccio beef_tartare beet_salad beignets bibimbap
    bread_pudding breakfast_burrito bruschetta caesar_salad cannoli caprese_salad carrot_cake
    ceviche cheesecake cheese_plate chicken_curry chicken_quesadilla chicken_wings chocolate_cake
    chocolate_mousse churros clam_chowder club_sandwich crab_cakes creme_brulee croque_madame
    cup_cakes deviled_eggs donuts dumplings edamame eggs_benedict escargots falafel filet_mignon
    fish_and_chips foie_gras french_fries french_onion_soup french_toast fried_calamari fried_rice
    frozen_yogurt garlic_bread gnocchi greek_salad grilled_cheese_sandwich grilled_salmon guacamole
    gyoza hamburger hot_and_sour_soup hot_dog huevos_rancheros hummus ice_cream lasagna
    lobster_bisque lobster_roll_sandwich macaroni_and_cheese macarons miso_soup mussels nachos
    omelette onion_rings oysters pad_thai paella pancakes panna_cotta peking_duck pho pizza pork_chop
    poutine prime_rib pulled_pork_sandwich ramen ravioli red_velvet_cake risotto samosa sashimi
    scallops seaweed_salad shrimp_and_grits spaghetti_bolognese spaghetti_carbonara spring_rolls
    steak strawberry_shortcake sushi tacos takoyaki tiramisu tuna_tartare waffles""".split()
)
